/*
 * replay.c - main() for a fuzz target built without libFuzzer: runs
 * LLVMFuzzerTestOneInput once on each file named, and on each file of each
 * directory named (in name order), so that ctest replays the corpora under
 * the sanitizers of any build (docs/testing.md, "Fuzzing").
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "gpuctl/util.h"

static int run_file(const char *path)
{
    char *data = NULL;
    size_t len = 0;
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_read_file(path, 64u << 20, &data, &len, &e)) {
        fprintf(stderr, "replay: %s\n", e.msg);
        return 1;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)data, len);
    free(data);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
    int bad = 0;
    size_t runs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            bad = 1;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad |= run_file(argv[i]);
            runs++;
            continue;
        }
        struct dirent **names;
        int n = scandir(argv[i], &names, NULL, by_name);
        if (n < 0) {
            perror(argv[i]);
            bad = 1;
            continue;
        }
        for (int k = 0; k < n; k++) {
            char p[4096];
            snprintf(p, sizeof(p), "%s/%s", argv[i], names[k]->d_name);
            if (names[k]->d_name[0] != '.' && stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
                bad |= run_file(p);
                runs++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("replay: %zu input(s) run\n", runs);
    return bad || runs == 0;
}
