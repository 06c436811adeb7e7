"""The engine host (DESIGN.md §1): the sessions registry, the one pending-question map (``inbox``), every control
request, served to any number of clients over every transport (memory, unix socket, stdio pipe)."""
