"""Fault-injection tests (issue 8): hangs, floods, races, disk full, interrupts, model faults."""
