"""The pre-registered design (python -m cobalt.design): its plan and its report."""
