"""What the research service's use cases return, built from a research's state: its status
(``status``, with ``asking.conversation``: what was asked, assumed, or waits for approval), a
page of its report (``report_pages``) and its checked sentences (``evidence``)."""
