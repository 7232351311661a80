/* RFC 5424 messages (see syslog_msg.h). */
#include "lib/byteorder.h"
#include "lib/string.h"
#include "net/clients/syslog_msg.h"

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

/* The Internet checksum's running sum over p[0..len) (RFC 1071). */
static u32 syslog_msg_sum(u32 sum, const u8 *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += get_be16(p + i);
	if (len & 1)
		sum += (u32)p[len - 1] << 8;
	return sum;
}

static u16 syslog_msg_fold(u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (u16)~sum;
}

size_t syslog_msg_frame(u8 *out, size_t size, const struct syslog_msg_link *l, u16 ip_id, const void *payload,
			size_t len)
{
	u8 *ip = out + 14, *udp = ip + 20, pseudo[12];
	size_t total = SYSLOG_MSG_FRAME_HDR + len;
	u16 csum;

	if (size < SYSLOG_MSG_FRAME_HDR || len > size - SYSLOG_MSG_FRAME_HDR || 20 + 8 + len > 1500)
		return 0;
	memcpy(out, l->dst_mac, 6);
	memcpy(out + 6, l->src_mac, 6);
	put_be16(out + 12, 0x0800);
	ip[0] = 0x45;
	ip[1] = 0;
	put_be16(ip + 2, (u16)(20 + 8 + len));
	put_be16(ip + 4, ip_id);
	put_be16(ip + 6, 0x4000);	/* don't fragment */
	ip[8] = 64;
	ip[9] = 17;			/* UDP */
	put_be16(ip + 10, 0);
	put_be32(ip + 12, l->src_ip);
	put_be32(ip + 16, l->dst_ip);
	put_be16(ip + 10, syslog_msg_fold(syslog_msg_sum(0, ip, 20)));
	put_be16(udp, l->src_port);
	put_be16(udp + 2, l->dst_port);
	put_be16(udp + 4, (u16)(8 + len));
	put_be16(udp + 6, 0);
	memcpy(udp + 8, payload, len);
	memcpy(pseudo, ip + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = 17;
	put_be16(pseudo + 10, (u16)(8 + len));
	csum = syslog_msg_fold(syslog_msg_sum(syslog_msg_sum(0, pseudo, sizeof pseudo), udp, 8 + len));
	put_be16(udp + 6, csum ? csum : 0xffff);	/* 0 would mean "no checksum" */
	return total;
}
