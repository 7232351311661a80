// The browser test's page script (tests/browsers/test_browsers.py): it
// writes "VIREO-OK module=1 font=1 video=1 seek=1 image=1" into the title
// and #result, and paints the body #123456, only when every check passed.
import { answer, once, OK } from "./lib/util.mjs";

async function font() {
	const faces = await document.fonts.load('16px "VireoMono"');
	return faces.length >= 1 && faces[0].status === "loaded" && document.fonts.check('16px "VireoMono"');
}

async function video() {
	const v = document.getElementById("clip");
	if (v.readyState < 1)
		await once(v, "loadedmetadata", 20000);
	return v.duration > 1.5 && v.videoWidth === 64 && v.videoHeight === 48;
}

async function seek() {
	const v = document.getElementById("clip");
	v.currentTime = 1.5;
	await once(v, "seeked", 20000);
	return Math.abs(v.currentTime - 1.5) < 0.2;
}

async function image() {
	const png = document.getElementById("png"), svg = document.getElementById("svg");
	await Promise.all([png.decode(), svg.decode()]);
	return png.naturalWidth === 16 && svg.naturalWidth === 16;
}

async function run() {
	const got = { module: answer() === 42 };
	for (const [name, check] of [["font", font], ["video", video], ["seek", seek], ["image", image]]) {
		try {
			got[name] = await check();
		} catch (e) {
			got[name] = false;
			got.error = (got.error ? got.error + "; " : "") + name + ": " + e.message;
		}
	}
	const pass = ["module", "font", "video", "seek", "image"].every((k) => got[k] === true);
	const line = (pass ? "VIREO-OK" : "VIREO-FAIL") + " module=" + (got.module ? 1 : 0) +
		" font=" + (got.font ? 1 : 0) + " video=" + (got.video ? 1 : 0) +
		" seek=" + (got.seek ? 1 : 0) + " image=" + (got.image ? 1 : 0) +
		(got.error ? " (" + got.error + ")" : "");
	document.title = line;
	document.getElementById("result").textContent = line;
	if (pass)
		document.body.style.background = OK;
}

run();
