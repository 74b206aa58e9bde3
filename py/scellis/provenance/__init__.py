"""Provenance (above every stage, beside the pipeline): which program node each IR op, kernel and piece of
code of the training step comes from, for the Guide's links from a drawn node to what computes it."""

from scellis.ir.owners import LOOP
from scellis.provenance.links import ProvenanceError, links

__all__ = ["LOOP", "ProvenanceError", "links"]
