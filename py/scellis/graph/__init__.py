"""Stage: the drawn program. Program JSON (format `scellis.program/1`), the op catalog, the Python
builder, and validation that reports every problem at once."""

from scellis.graph.catalog import CATALOG, palette
from scellis.graph.errors import Issue, ProgramError
from scellis.graph.program import Program, Ref
from scellis.graph.validate import FORMAT, ValidProgram, validate

__all__ = ["CATALOG", "FORMAT", "Issue", "Program", "ProgramError", "Ref", "ValidProgram", "palette", "validate"]
