"""The supervisor and its specialist agents, in rooms: the supervisor, its gates, reflection and
dispatch records here; the agents (agents/), the report (report/), fitting content to a window
(fitting/) and the deadline (deadline/) beneath."""
