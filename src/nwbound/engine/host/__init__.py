"""The host engine: kernel sums with NumPy and numba."""
