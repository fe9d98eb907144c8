"""How the event loop and the backends reach a store: worker threads that never block the loop
(aio), patience through a short outage, and waits that read the store again."""
