/*
 * The `shiftsim` command line: main() sets the locale (ssim_cli_init_locale) and calls
 * ssim_cli_main, which returns the process exit status.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS
int ssim_cli_main(int argc, char **argv);
/*
 * The user's locale for text (so GLib's --help says [OPTION…] in a UTF-8 locale, and messages
 * convert properly), but numbers in the C locale: every figure shiftsim prints or reads, through
 * printf and strtod as well as g_ascii_*, has a decimal point whatever LC_NUMERIC says.
 */
void ssim_cli_init_locale(void);
/* The widest line of any --help: SSIM_CLI_HELP_COLUMNS columns (characters, not bytes). */
#define SSIM_CLI_HELP_COLUMNS 100
/*
 * `text` with each line wider than `columns` wrapped at blanks: an option line ("  -x, --name=ARG
 * description") continues under its description, any other line under its own indent.  A word
 * wider than the room is left whole.  Newly allocated.
 */
char *ssim_cli_wrap_help(const char *text, guint columns);
G_END_DECLS
