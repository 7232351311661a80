# images/images.mk — every deployable image, included by the Makefile.
#
#   make images   build/vireo.img        GPT disk, ESP with vireo as BOOTX64.EFI
#                 build/vireo-grub.img   the same with GRUB in front: the kernel
#                                        command line lives in its grub.cfg
#                 build/vireo.iso        hybrid ISO (CD and disk), GRUB ESP
#                 build/vireo.qcow2      qcow2 of vireo-grub.img
#                 build/vireo-gce.tar.gz GCE: disk.raw (1 GiB, sparse), oldgnu tar
#                 build/vireo-azure.vhd  Azure: fixed VHD, 20 MiB
#                 build/vireo-aws.vmdk   AWS: streamOptimized VMDK
#   make sign KEY=key.pem CERT=cert.pem [KEY_PASS=...]
#                 build/signed/{vireo,grubx64}.efi and build/vireo-signed.img,
#                 the plain disk with the signed vireo (Secure Boot)
#   GRUB_CMDLINE="..."  what grub.cfg passes to vireo (default panic=reboot);
#                 images/setcmdline.sh changes it in a built image.
# Everything is made without root from Debian packages, reproducibly (times
# from SOURCE_DATE_EPOCH, fixed ids). docs/deploy.md says how to import each.
# With APP=apps/NAME (docs/apps.md) the same files land in build/apps/NAME/.

GRUB_CMDLINE ?= panic=reboot
export GRUB_CMDLINE KEY_PASS

IMG_DIR    := $(OUT)/images
GRUB_EFI   := $(IMG_DIR)/grubx64.efi
GRUB_ESP   := $(IMG_DIR)/grub-esp.img
GRUB_IMAGE := $(OUT)/vireo-grub.img
ISO        := $(OUT)/vireo.iso
QCOW2      := $(OUT)/vireo.qcow2
GCE_TAR    := $(OUT)/vireo-gce.tar.gz
AZURE_VHD  := $(OUT)/vireo-azure.vhd
AWS_VMDK   := $(OUT)/vireo-aws.vmdk
IMAGES     := $(IMAGE) $(GRUB_IMAGE) $(ISO) $(QCOW2) $(GCE_TAR) $(AZURE_VHD) $(AWS_VMDK)
SIGNED     := $(OUT)/signed
IMG_LIB    := images/lib.sh

# Packages the image builders use beyond the build set in tools/deps.sh.
IMAGES_DEBS := grub-efi-amd64-bin xorriso qemu-utils sbsigntool openssl

.PHONY: images sign deps-images
images: deps-images $(IMAGES)
	$(Q)images/sizes.sh $(IMAGES)

# `make test` boots every image (tests/qemu/test_images.py); its build step
# makes them beside everything else.
test-qemu: images
test-build: images

deps-images:
	$(Q)missing=""; for p in $(IMAGES_DEBS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "deps: installing$$missing"; sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# The Makefile's rule for $(IMAGE) runs images/mkimage.sh; it also uses lib.sh.
$(IMAGE): $(IMG_LIB)

# GRUB_CMDLINE is recorded in a file that changes only when the value does,
# so changing it rebuilds the GRUB images and nothing else.
$(IMG_DIR)/grub-cmdline: images-force
	@mkdir -p $(dir $@)
	@printf '%s\n' "$$GRUB_CMDLINE" | cmp -s - $@ 2>/dev/null || printf '%s\n' "$$GRUB_CMDLINE" >$@
images-force:

$(GRUB_EFI): images/mkgrubefi.sh images/grub-early.cfg $(IMG_LIB)
	@mkdir -p $(dir $@)
	$(Q)images/mkgrubefi.sh $@

$(GRUB_IMAGE) $(GRUB_ESP) &: $(EFI) $(GRUB_EFI) $(IMG_DIR)/grub-cmdline images/mkgrub.sh $(IMG_LIB)
	$(Q)images/mkgrub.sh --cmdline "$$GRUB_CMDLINE" --esp $(GRUB_ESP) $(EFI) $(GRUB_EFI) $(GRUB_IMAGE)

$(ISO): $(GRUB_ESP) images/mkiso.sh $(IMG_LIB)
	$(Q)images/mkiso.sh $(GRUB_ESP) $@

$(QCOW2): $(GRUB_IMAGE) images/mkcloud.sh $(IMG_LIB)
	$(Q)images/mkcloud.sh qcow2 $(GRUB_IMAGE) $@
$(GCE_TAR): $(GRUB_IMAGE) images/mkcloud.sh $(IMG_LIB)
	$(Q)images/mkcloud.sh gce $(GRUB_IMAGE) $@
$(AZURE_VHD): $(GRUB_IMAGE) images/mkcloud.sh images/normalize.py $(IMG_LIB)
	$(Q)images/mkcloud.sh azure $(GRUB_IMAGE) $@
$(AWS_VMDK): $(GRUB_IMAGE) images/mkcloud.sh images/normalize.py $(IMG_LIB)
	$(Q)images/mkcloud.sh aws $(GRUB_IMAGE) $@

# Signing always runs (the key is not a file make can track). No signed GRUB
# disk is made: Debian's GRUB under Secure Boot will only chainload through
# shim ("shim_lock protocol not found"), so a signed GRUB is only of use
# behind a shim + MOK chain set up by hand (docs/deploy.md).
sign: deps-images $(EFI) $(GRUB_EFI)
	@if [ -z "$(KEY)" ] || [ -z "$(CERT)" ]; then \
		echo "usage: make sign KEY=key.pem CERT=cert.pem [KEY_PASS=passphrase]" >&2; exit 2; fi
	@mkdir -p $(SIGNED)
	$(Q)images/sign.sh "$(KEY)" "$(CERT)" $(EFI) $(SIGNED)/vireo.efi
	$(Q)images/sign.sh "$(KEY)" "$(CERT)" $(GRUB_EFI) $(SIGNED)/grubx64.efi
	$(Q)images/mkimage.sh $(SIGNED)/vireo.efi $(OUT)/vireo-signed.img
