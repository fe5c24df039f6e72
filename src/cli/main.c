/* main.c - gpuctl entry point; everything else lives in the core library. */
#include "cli.h"

int main(int argc, char **argv)
{
    return gpc_cli_main(argc, argv);
}
