"""What each action of the ``research`` tool returns: the models of ``data`` (data), the
published shapes of the status (status) and the report (report), each action's hints (hints)
and a status in one line (progress)."""
