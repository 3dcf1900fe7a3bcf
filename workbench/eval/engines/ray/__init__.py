"""The Ray engine: a driver that deals jobs to actors and logs the rows they send back through
the one `Store`."""
