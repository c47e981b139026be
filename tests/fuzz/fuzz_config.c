/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_config — libFuzzer target for the configuration parser.
 *
 * The input is a config file. Odd first byte: parsed from a memfd through
 * config_load (the file path: NUL bytes, size checks); even: the bytes
 * after it up to the first NUL through config_load_string. Oracles beyond
 * "no crash, no leak, no UB":
 *   - the error count equals the number of error lines written, and
 *     every line starts with the file name;
 *   - a configuration with no error prints (config_print) to text that
 *     loads with no error into the same configuration ([mode NAME]
 *     sections included), and its JSON form and restart-key comparison
 *     work.
 * The file is a real one, conf_path in a private directory made once at
 * start, and stays in place through the round trip. The first harness read
 * a memfd through /proc/self/fd/N: a relative path in the file
 * ("[waveform] file = 3") then resolved to /proc/self/fd/3, which came and
 * went with the harness's and config_load's own descriptors, so the reload
 * failed with ENOENT — the harness changing the file system under the
 * parser, not a parser bug. In a fixed directory that only holds the
 * config, a relative path means the same thing on load and on reload.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "log.h"

static char conf_dir[64], conf_path[96];

static void cleanup(void)
{
	if (conf_path[0])
		unlink(conf_path);
	if (conf_dir[0])
		rmdir(conf_dir);
}

static int count_lines(const char *s, const char *name)
{
	int n = 0;
	const char *p = s;

	while (*p) {
		if (strncmp(p, name, strlen(name)))
			abort();        /* an error line that does not say where */
		const char *nl = strchr(p, '\n');
		if (!nl)
			abort();        /* unterminated error line */
		n++;
		p = nl + 1;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct chirp_config c, back;
	char *errs = NULL, *printed = NULL, *errs2 = NULL;
	size_t elen = 0, plen = 0, e2len = 0;
	const char *name;
	FILE *m;
	int n;

	if (size < 1)
		return 0;
	m = open_memstream(&errs, &elen);
	if (!m)
		return 0;
	if (data[0] & 1) {
		int fd = open(conf_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		ssize_t w;

		if (fd < 0)
			abort();        /* the harness's own directory: a harness bug */
		w = write(fd, data + 1, size - 1);
		if (close(fd) < 0 || w != (ssize_t)(size - 1))
			abort();
		name = conf_path;
		n = config_load(&c, conf_path, m);
	} else {
		char *text = malloc(size);
		memcpy(text, data + 1, size - 1);
		text[size - 1] = '\0';
		name = "fuzz.conf";
		n = config_load_string(&c, name, text, m);
		free(text);
	}
	fclose(m);
	if (n < 0) {
		free(errs);
		return 0;
	}
	if (count_lines(errs, name) != n)
		abort();
	free(errs);
	if (n != 0)
		return 0;

	m = open_memstream(&printed, &plen);
	config_print(&c, m);
	fclose(m);
	m = open_memstream(&errs2, &e2len);
	n = config_load_string(&back, "printed", printed, m);
	fclose(m);
	if (n != 0) {
		fprintf(stderr, "printout rejected:\n%s\n%s", errs2, printed);
		abort();
	}
	memset(back.path, 0, sizeof(back.path));
	memset(c.path, 0, sizeof(c.path));
	back.wf.file = c.wf.file = NULL;
	for (unsigned i = 0; i < CFG_MAX_MODES; i++)
		back.modes[i].wf.file = c.modes[i].wf.file = NULL;
	if (memcmp(&c, &back, sizeof(c))) {
		const unsigned char *x = (const void *)&c, *y = (const void *)&back;
		size_t i = 0;
		while (x[i] == y[i])
			i++;
		fprintf(stderr, "round trip changed the configuration at byte %zu:\n%s", i, printed);
		abort();
	}
	{
		char keys[512];
		json_t *j = config_to_json(&c);
		if (!j)
			abort();
		json_decref(j);
		if (config_restart_keys(&c, &back, keys, sizeof(keys)) != 0)
			abort();
	}
	free(printed);
	free(errs2);
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc; (void)argv;
	log_init("fuzz_config");
	log_set_level(LOG_ERR);
	{
		const char *tmp = getenv("TMPDIR");
		snprintf(conf_dir, sizeof(conf_dir), "%s/fuzz_config.XXXXXX",
			 tmp && *tmp && strlen(tmp) < 40 ? tmp : "/tmp");
		if (!mkdtemp(conf_dir)) {
			perror("fuzz_config: mkdtemp");
			abort();
		}
		snprintf(conf_path, sizeof(conf_path), "%s/fuzz.conf", conf_dir);
		atexit(cleanup);
	}
	return 0;
}
