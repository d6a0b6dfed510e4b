"""The notifier service: Gets event and hook notices out to webhooks and integration subjects."""
