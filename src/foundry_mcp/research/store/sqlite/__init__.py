"""The default store: one SQLite database in WAL mode under ``research_dir``."""
