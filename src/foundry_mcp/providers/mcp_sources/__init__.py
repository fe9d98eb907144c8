"""Other MCP servers as sources of a research: their connections (``connection``), the tools
they offer and which of them may be called (``tools``), all of them for one process
(``sources``) and what ``doctor`` says of them (``checks``). A research searches one through
``search``: its listings read by what they are (``listings``), every item confined to the
source's folder (``paths``), listed and read once per research (``kept``)."""
