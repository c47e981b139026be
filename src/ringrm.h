/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ringrm.h — chirpd --remove-rings: remove the rings a configuration names.
 */
#ifndef CHIRP_RINGRM_H
#define CHIRP_RINGRM_H

#include <stdio.h>

/*
 * Remove the input, output and detection rings that the configuration at
 * config_path names, all of them or none: when a live process holds the
 * role chirpd takes on any of them (the consumer of the input ring, the
 * producer of the output and detection rings), nothing is removed and the
 * refusal names each such ring. With if_configured, nothing is done unless
 * the file says [daemon] remove_rings_on_stop = true (the systemd units'
 * ExecStopPost). A ring that is not there is reported and is no error.
 * What was done goes to out, errors to stderr. Returns chirpd's exit
 * status: 0 done (or nothing to do), 1 refused or failed, EX_CONFIG for a
 * configuration that does not load.
 */
int ringrm_run(const char *config_path, int if_configured, FILE *out);

#endif /* CHIRP_RINGRM_H */
