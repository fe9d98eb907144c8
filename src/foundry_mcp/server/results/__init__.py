"""What each action of the ``research`` tool returns: the models of ``data`` (data), and the
published shapes of the status (status) and the report (report)."""
