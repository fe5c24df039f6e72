# scripted: the test providers of the engine tests (tests/unit/test_engine*.c;
# docs/testing.md).  Built only into gpuctl_engine_test (tests/CMakeLists.txt),
# never into gpuctl.  One world, three tables:
#   scripted        nodes one by one: list_zones, find_node, describe_nodes,
#                   nodes_running, cleanup_cluster
#   scripted_batch  the same, and create_nodes (ranks from the launch index)
#   scripted_basic  only what a provider must have, and find_node: no zones,
#                   no describe_nodes, no cleanup_cluster; the IP is known
#                   only once described
gpuctl_provider(scripted SOURCES scripted.c NODE_SCRIPT node.sh)
gpuctl_provider(scripted_batch)
gpuctl_provider(scripted_basic)
