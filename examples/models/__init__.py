"""Model code for capture tests and cases (sequential specs and their parallel versions)."""
