"""The tools the model uses: one module per tool on the contract of ``core.tool``."""
