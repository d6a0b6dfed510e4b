"""The observer service: watches the cloud, records drift, asks for converge plans."""
