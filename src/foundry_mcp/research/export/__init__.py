"""Exports of a research for other tools: markdown, JSON, BibTeX and RIS.

``document`` renders a research in each format (its JSON shape is ``ResearchExport``, whose
schema is :func:`schema`) named in ``formats``, ``citations`` writes the BibTeX and RIS entries
of its sources, and ``files`` puts an export inline or into a file of the workspace.

The package imports none of them itself: ``footer`` (the cost line under a report) serves every
read of a report, without the export models.
"""
