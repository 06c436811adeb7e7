"""Property-based fuzz tests (issue 8): permission rules, settings files, tool inputs, file-tool state machine."""
