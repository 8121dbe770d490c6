"""The shipped device catalogues (catalogs/) and networks (networks/), installed as the package `hps.topologies`."""
