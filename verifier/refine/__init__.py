"""Refinement engine: per-operator inference of clean relations (docs/refinement.md)."""

from .infer import Failure, Inference, infer

__all__ = ["Failure", "Inference", "infer"]
