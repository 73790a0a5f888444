"""``make demo``: fabricfit on a simulated GPU cluster (see ``demo.__main__``)."""
