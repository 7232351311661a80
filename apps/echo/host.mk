# apps/echo's host test (the Makefile reads every apps/*/host.mk): echo.c
# over the runtime's host build, its TCP and UDP services on the host's lwIP.
HOST_TESTS += test_echo
test_echo_USES := $(RUNTIME_HOST_USES) siphash
test_echo_SRCS := apps/echo/echo.c $(filter-out $(SITE_APP),$(RUNTIME_HOST_SRCS))
LWIP_HOST_TESTS += test_echo
