"""Schedulers' side of the tool: `scheduling` (pure: the command line a task runs, the outcome
its exit code means, the summary it hands on) and `airflow` (the operator; imported only where
Airflow is installed)."""
