"""Reporting: Table 1 statistics, plots, the HTML report and MLflow tracking of scored runs."""
