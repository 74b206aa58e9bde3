"""Checks of the engine against the float64 reference: the correctness matrix behind correctness.json."""
