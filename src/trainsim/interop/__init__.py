"""Interoperability with other simulators: Chakra execution traces (ASTRA-sim) and SimAI
workload files."""
