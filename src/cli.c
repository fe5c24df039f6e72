/* cli.c - placeholder until the command table lands. */
#include <stdio.h>
#include "cli.h"

int gpc_cli_main(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "gpuctl: not yet\n");
    return 1;
}
