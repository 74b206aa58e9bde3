"""Stage: execution. The reference: the IR oracle in numpy float64 (oracle), the device that runs kernel
schedules through it (device), and whole training steps on it (train). CPython only."""
