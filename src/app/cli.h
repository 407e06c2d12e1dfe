/* The `shiftsim` command line: main() is a call of this.  Returns the process exit status. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS
int ssim_cli_main(int argc, char **argv);
G_END_DECLS
