"""The bottom floor: helpers every layer may use and that import nothing of ours (DESIGN.md §1)."""
