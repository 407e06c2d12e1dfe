/* shiftsim's entry point: everything, option parsing included, lives in the library. */
#include "src/app/cli.h"

#include <shiftsim/alloc.h>

int main(int argc, char **argv)
{
    ssim_cli_init_locale();
    ssim_alloc_keep_freed_memory(); /* a sweep's configurations reuse each other's memory */
    return ssim_cli_main(argc, argv);
}
