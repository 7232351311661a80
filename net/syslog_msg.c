/* RFC 5424 messages (see syslog_msg.h). */
#include "net/syslog_msg.h"

static bool syslog_msg_prefix(const char *line, size_t len, const char *p)
{
	size_t i;

	for (i = 0; p[i]; i++)
		if (i >= len || line[i] != p[i])
			return false;
	return true;
}

int syslog_msg_severity(const char *line, size_t len)
{
	if (syslog_msg_prefix(line, len, "vireo: panic"))
		return SYSLOG_SEV_CRIT;
	if (syslog_msg_prefix(line, len, "warning:"))
		return SYSLOG_SEV_WARNING;
	return SYSLOG_SEV_INFO;
}

size_t syslog_msg_unstamp(const char *line, size_t len)
{
	/* "[2026-12-04T20:40:58.195Z] ": 27 bytes */
	if (len >= 27 && line[0] == '[' && line[11] == 'T' && line[24] == 'Z' && line[25] == ']' && line[26] == ' ')
		return 27;
	return 0;
}

static size_t syslog_msg_put(char *out, size_t size, size_t o, const char *s)
{
	for (; s && *s && o < size; s++)
		out[o++] = *s;
	return o;
}

size_t syslog_msg_format(char *out, size_t size, int severity, const char *timestamp, const char *host,
			 const char *msg, size_t len)
{
	char pri[8];
	int v = SYSLOG_FACILITY_USER * 8 + (severity & 7), n = 0;
	size_t o = 0;

	pri[n++] = '<';
	if (v >= 10)
		pri[n++] = (char)('0' + v / 10);
	pri[n++] = (char)('0' + v % 10);
	pri[n++] = '>';
	pri[n++] = '1';
	pri[n++] = ' ';
	pri[n] = '\0';
	o = syslog_msg_put(out, size, o, pri);
	o = syslog_msg_put(out, size, o, timestamp && *timestamp ? timestamp : "-");
	o = syslog_msg_put(out, size, o, " ");
	o = syslog_msg_put(out, size, o, host && *host ? host : "-");
	o = syslog_msg_put(out, size, o, " vireo - - - ");
	if (o >= size)
		return 0;
	for (size_t i = 0; i < len && o < size; i++) {
		unsigned char c = (unsigned char)msg[i];

		out[o++] = c < 0x20 || c >= 0x7f ? '?' : (char)c;
	}
	return o;
}
