# The test programs (one per area) and their rank counts.
trident_mpi_test(core RANKS 1 2 4 8 TIMEOUT 120 SOURCES test_comm.cpp test_mesh.cpp)
trident_mpi_test(tensor RANKS 1 2 4 TIMEOUT 120 SOURCES test_tensor.cpp)
add_subdirectory(package)
trident_mpi_test(safetensors RANKS 1 TIMEOUT 120 SOURCES test_safetensors.cpp)
trident_mpi_test(pp_schedule RANKS 1 TIMEOUT 120 SOURCES test_pp_schedule.cpp)
trident_mpi_test(parity_tp RANKS 1 2 4 8 TIMEOUT 600 SOURCES test_parity_tp.cpp)
trident_mpi_test(plan RANKS 1 TIMEOUT 120 SOURCES test_plan.cpp)
