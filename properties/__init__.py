"""The in-process certification: Hypothesis properties over simulated ranks."""
