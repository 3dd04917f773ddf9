"""Every rendering of a report or a comparison to a file or a table: the terminal text of a
report, Markdown/LaTeX tables, the HTML report and its SVG charts, Parquet and MLflow exports."""
