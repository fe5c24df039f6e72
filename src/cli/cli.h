/* cli.h - the command-line front end (command table in cli.c). */
#ifndef GPUCTL_CLI_H
#define GPUCTL_CLI_H

/* Run gpuctl with the given arguments; returns the process exit status. */
int gpc_cli_main(int argc, char **argv);

#endif
