"""``ember agent``: a server's software configs fetched, run once each, and signalled back."""
