"""Staged verification on shape-reduced graphs: reduction, dedup of stages, executors (docs/stages.md)."""
