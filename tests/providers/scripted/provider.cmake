# scripted: the test providers of the engine tests (tests/unit/test_engine*.c;
# docs/testing.md).  Built only into gpuctl_engine_test (tests/CMakeLists.txt),
# never into gpuctl.  One world, six tables:
#   scripted        nodes one by one: list_zones, find_node, describe_nodes,
#                   nodes_running, cleanup_cluster
#   scripted_batch  the same, and create_nodes (ranks from the launch index)
#   scripted_basic  only what a provider must have, and find_node: no zones,
#                   no describe_nodes, no cleanup_cluster; the IP is known
#                   only once described
#   scripted_named  a rendezvous name given before launch (rdzv_name), ranks
#                   from the engine, nodes one by one; interruption notices
#                   and the orphan listing
#   scripted_group  one group per cluster (create_nodes of every rank, a
#                   delete removes the group), the head found on the node,
#                   ranks from the scheduler, a queue (GPC_CAP_QUEUE),
#                   shares_files per region; notices; named
#                   sections of the config file (site_keys login, partitions,
#                   account: test_engine_settings.c)
#   scripted_rdzv  the head's IP, workers numbered by the rendezvous
gpuctl_provider(scripted SOURCES scripted.c NODE_SCRIPT node.sh)
gpuctl_provider(scripted_batch)
gpuctl_provider(scripted_basic)
gpuctl_provider(scripted_rdzv)
gpuctl_provider(scripted_group)
gpuctl_provider(scripted_named)
