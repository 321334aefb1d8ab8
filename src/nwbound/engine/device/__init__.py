"""The device engine: kernel sums and bounds on any array library and device."""
