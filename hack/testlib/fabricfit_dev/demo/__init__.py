"""``make demo``: fabricfit on a simulated GPU cluster (see ``fabricfit_dev.demo.__main__``)."""
