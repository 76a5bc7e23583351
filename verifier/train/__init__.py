"""Training iterations: the sequential step (step.py), the reference parallelizer (plan.py)
and the bug injector (mutate.py). See docs/training.md."""
