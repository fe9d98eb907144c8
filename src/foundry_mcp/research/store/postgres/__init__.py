"""The team's store: a PostgreSQL database shared by the servers of a team (``store_url``)."""
