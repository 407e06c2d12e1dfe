/* shiftsim's entry point: everything, option parsing included, lives in the library. */
#include "src/app/cli.h"

int main(int argc, char **argv)
{
    ssim_cli_init_locale();
    return ssim_cli_main(argc, argv);
}
