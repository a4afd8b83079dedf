# The test programs (one per area) and their rank counts.
trident_mpi_test(core RANKS 1 2 4 8 TIMEOUT 120 SOURCES test_comm.cpp test_mesh.cpp)
