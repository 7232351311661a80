/* A tiny serial-console command interpreter (help, mem, stats, reboot...). */
#ifndef VIREO_SHELL_H
#define VIREO_SHELL_H

void shell_line(const char *line);

#endif
